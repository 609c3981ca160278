"""The ``electrics`` table of an actuated joint: an armature-controlled DC motor drives it.

    [[model.joints]]
    name = "q1"
    kind = "elastic_gear"
    gear_ratio = 100.0          # needed: the motor turns gear_ratio times as fast as qm
    electrics = { inductance = 2.0e-3, resistance = 1.0, torque_constant = 0.1, back_emf_constant = 0.1 }

Motor-side constants as on a data sheet (SI): L di/dt + R i + C_v omega_motor = V, motor torque C_t i
(Jankowski & Van Brussel, discrete-time inverse dynamics control of flexible joint robots, eq. 3).
Every actuated joint or none has electrics (the plan's input is then every motor's voltage).
"""

from __future__ import annotations

from ffopt.io.schema import Field, Validator, positive
from ffopt.models.chain import Chain, MotorElectrics

ELECTRICS_SCHEMA = {
    "inductance": Field("float", required=True, check=positive, unit="H",
                        doc="armature inductance L (> 0: the current is a state of the plant)"),
    "resistance": Field("float", required=True, check=positive, unit="Ohm", doc="armature resistance R"),
    "torque_constant": Field("float", required=True, check=positive, unit="N m/A",
                             doc="motor torque constant C_t: motor torque = C_t x current (motor side)"),
    "back_emf_constant": Field("float", required=True, check=positive, unit="V s/rad",
                               doc="back-EMF constant C_v: induced voltage = C_v x motor speed (motor side)"),
}


def parse_electrics(v: Validator, table: dict, where: str) -> MotorElectrics | None:
    """The joint's MotorElectrics from its validated table (None without ``electrics``)."""
    e = table.get("electrics")
    if e is None:
        return None
    if table["kind"] == "passive":
        v.fail(f"{where}.electrics", "a passive joint has no motor: electrics belong to elastic_gear or direct joints")
    if table.get("gear_ratio") is None:
        v.fail(f"{where}.gear_ratio", "electrics need the gear ratio (motor speed = gear_ratio x the arm-side motor "
               "speed; torque at the gear output = gear_ratio x C_t i); give 1 for a motor without a gear")
    return MotorElectrics(e["inductance"], e["resistance"], e["torque_constant"], e["back_emf_constant"])


def check_electric_chain(v: Validator, chain: Chain) -> None:
    """Every actuated joint has electrics, or none (the input is every motor's voltage or torque)."""
    actuated = [chain.joints[i] for i in chain.actuated]
    with_e = [j.name for j in actuated if j.electrics is not None]
    if with_e and len(with_e) != len(actuated):
        without = [j.name for j in actuated if j.electrics is None]
        v.fail("model.joints", f"electrics on {', '.join(with_e)} but not on {', '.join(without)}: give every "
               "actuated joint its electrics (the plan's input is every motor's voltage) or none (every motor's "
               "torque)")
