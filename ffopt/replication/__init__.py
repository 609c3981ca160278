"""Replication of the papers' solver variants, kept apart from the production solvers of ffopt.dae.

Moberg & Hanssen, inverse dynamics of flexible manipulators (DAE methods), sec. 7.2, solve E1 and
E12 by a family of BDF variants; here for comparison with ffopt's own forms (CLI methods hi, dd43,
dd44, dd48, dd49, km, dc; method dd is the production route of ffopt.dae.dummy_derivatives, whose
reduced system the family's DD variant steps in its own engines):

- moberg_hanssen: HI, DD43..DD49 (the hand-made E1 systems), the dispatcher of the whole family;
- kunkel_mehrmann: KM, BDF on Kunkel & Mehrmann's underdetermined system;
- decoupled: DC, BDF on the decoupled system;
- python_bdf: Python BDF steppers (Gauss-Newton, scipy least squares) for like-for-like timings.

This package imports ffopt.dae; ffopt.dae never imports it.
"""
