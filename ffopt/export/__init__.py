"""``ffopt export``: the BDF inverse model as portable C for a robot controller (Thuemmel, Otter & Bals,
control of robots with elastic joints based on automatic generation of inverse dynamic models, 2001).

``export_problem`` writes a folder with one step function per controller sample (CasADi code
generation of the same BDF step the offline solver compiles), a handwritten C API around it
(``ffopt_init``, ``ffopt_step``, ``ffopt_reset``; fixed memory, C99, libm only), a test harness, a
CMakeLists.txt and a README. ``ffopt.export.runtime`` compiles and loads it through ctypes.
"""

from ffopt.export.generate import ExportInfo, check_exportable, export_problem, reference_samples

__all__ = ["ExportInfo", "check_exportable", "export_problem", "reference_samples"]
