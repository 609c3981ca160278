"""Motion design: the time law along a fixed path, chosen for speed (minimum time under the robot's limits),
rest at the end and, with parameter ranges, robustness; with the rigid-robot peers it is compared against
(time-optimal path parameterisation by TOPP-RA, jerk-limited profiles by Ruckig) in ``ffopt.motion.peers``."""
