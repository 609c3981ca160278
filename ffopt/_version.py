"""ffopt's version, in a module of its own: the package, the disk caches' keys and the files ffopt writes read it
here, so none of them has to import the package root (``ffopt/__init__.py`` imports the whole planning stack)."""

__version__ = "0.1.0"
