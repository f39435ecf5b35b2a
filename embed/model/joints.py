"""Joints as the way to write a model: an ``embed.Model`` from sympy.physics.mechanics's ``System``.

A mechanism is a list of bodies (``RigidBody``, ``Particle``) connected by sympy's own joints
(``PinJoint``, ``PrismaticJoint``, ``SphericalJoint``, ``WeldJoint``, ...) in a ``System``; its
loads, holonomic constraints (loop closures) and nonholonomic constraints are the System's.
``model_from_system`` (``Model.from_system``) forms the unconstrained Kane terms over *all* of
the System's coordinates and speeds (independent and dependent alike: the engine partitions
them, gillespie2005 eq 11) with each joint's own generalized speeds and kinematical equations,
and turns the System's constraints into engine constraints (``model.constraints``) that the
modes name and the engine embeds.

``QuaternionJoint`` is the spherical joint wang2019 calls a "nonholonomic kinematic link"
(Sec 2.1, eq 4; Sec 3.1): the orientation of the child is a unit quaternion (Euler parameters
p = (e0, e1, e2, e3), haug_pavesic2023 eq 36), and its generalized speeds are the body-fixed
angular velocity omega' = (w1, w2, w3) of the child (not the rates of any coordinate) and
pn = p^T pdot, with the kinematical equations

    pdot = 1/2 G(p)^T omega' + p pn          (haug_pavesic2023 eq 38, G of its Appendix)

and the normalization 1/2 (p^T p - 1) = 0, a holonomic constraint (``<joint>_normalization``)
that makes pn dependent (|p|^2 pn = 0) and is held at configuration level by the engine's
projection (haug_pavesic2023 eq 13-16): 4 coordinates, 4 speeds, 3 degrees of freedom, no
singular orientation.  ``scenarios/top.py`` writes the same kinematics by hand.
"""

from __future__ import annotations

import sympy as sp
from sympy.physics.mechanics import RigidBody, System, dynamicsymbols
from sympy.physics.mechanics.joint import Joint

from .constraints import holonomic, motion
from ..base.errors import ModelDefinitionError


def G_matrix(p):
    """G(p) = [-e, -e~ + e0 I] (haug_pavesic2023 Appendix): omega' = 2 G(p) pdot (eq 38)."""
    e0, e1, e2, e3 = p
    return sp.Matrix([[-e1, e0, e3, -e2],
                      [-e2, -e3, e0, e1],
                      [-e3, e2, -e1, e0]])


class QuaternionJoint(Joint):
    """Ball joint in Euler parameters with body-fixed angular velocities as speeds.

    The child's interframe is oriented in the parent's by the unit quaternion ``coordinates``
    (e0 the scalar part; ``child_interframe.orient_quaternion(parent_interframe, p)``, so
    ``parent_interframe.dcm(child_interframe)`` is A(p) of haug_pavesic2023 eq 36), and the
    joint points of parent and child coincide, as in sympy's ``SphericalJoint``.

    Parameters
    ----------
    name : str
    parent, child : RigidBody or Particle
    coordinates : sequence of 4 dynamicsymbols, optional
        p = (e0, e1, e2, e3); default ``e0_<name>`` ... ``e3_<name>``.
    speeds : sequence of 4 dynamicsymbols, optional
        (w1, w2, w3, pn): the child interframe's angular velocity in the parent interframe,
        in child-interframe components, and pn = p^T pdot; default ``w1_<name>`` ...
        ``w3_<name>``, ``pn_<name>``.
    parent_point, child_point, parent_interframe, child_interframe
        As for sympy's joints (a Point or a Vector from the mass centre; a frame or a Vector).

    Notes
    -----
    ``normalization`` is the configuration constraint 1/2 (p^T p - 1); ``Model.from_system``
    adds it as ``<name>_normalization``.  A speed pn = 0 and |p| = 1 give the rates
    pdot = 1/2 G(p)^T omega' (eq 38).
    """

    def __init__(self, name, parent, child, coordinates=None, speeds=None, parent_point=None,
                 child_point=None, parent_interframe=None, child_interframe=None):
        super().__init__(name, parent, child, coordinates, speeds, parent_point, child_point,
                         parent_interframe=parent_interframe, child_interframe=child_interframe)

    def __str__(self):
        return f"QuaternionJoint: {self.name}  parent: {self.parent}  child: {self.child}"

    def _generate_coordinates(self, coordinates):
        return self._named(coordinates, ("e0", "e1", "e2", "e3"), "coordinate")

    def _generate_speeds(self, speeds):
        return self._named(speeds, ("w1", "w2", "w3", "pn"), "speed")

    def _named(self, given, labels, what):
        if given is None:
            return sp.Matrix(dynamicsymbols(" ".join(f"{k}_{self.name}" for k in labels)))
        given = list(given)
        if len(given) != 4:
            raise ModelDefinitionError(
                f"QuaternionJoint {self.name!r}: {len(given)} generalized {what}s given, "
                f"4 expected ({', '.join(labels)})")
        return sp.Matrix(given)

    @property
    def quaternion(self):
        """p = (e0, e1, e2, e3) as a column."""
        return sp.Matrix(self.coordinates)

    @property
    def omega(self):
        """omega' = (w1, w2, w3): the body-fixed angular velocity speeds."""
        return sp.Matrix(self.speeds[:3])

    @property
    def normalization(self):
        """1/2 (p^T p - 1): the holonomic constraint of the unit quaternion."""
        p = self.quaternion
        return ((p.T * p)[0] - 1) / 2

    def _generate_kdes(self):
        """pdot - (1/2 G(p)^T omega' + p pn) = 0 (haug_pavesic2023 eq 38)."""
        p = self.quaternion
        rates = G_matrix(p).T * self.omega / 2 + p * self.speeds[3]
        t = dynamicsymbols._t
        return sp.Matrix([pi.diff(t) - r for pi, r in zip(p, rates)])

    def _orient_frames(self):
        self.child_interframe.orient_quaternion(self.parent_interframe, tuple(self.coordinates))

    def _set_angular_velocity(self):
        c = self.child_interframe
        w = self.omega
        self.child_interframe.set_ang_vel(self.parent_interframe,
                                          w[0] * c.x + w[1] * c.y + w[2] * c.z)

    def _set_linear_velocity(self):
        """The joint points coincide (as sympy's SphericalJoint)."""
        self.child_point.set_pos(self.parent_point, 0)
        self.parent_point.set_vel(self._parent_frame, 0)
        self.child_point.set_vel(self._child_frame, 0)
        self.child.masscenter.v2pt_theory(self.parent_point, self._parent_frame,
                                          self._child_frame)


def model_from_system(cls, system, *, params=(), inputs=(), forces=(), constraint_names=None,
                      name="model"):
    """An ``embed.Model`` (class ``cls``) of a sympy ``System``, its constraints attached.

    Parameters
    ----------
    system : sympy.physics.mechanics.System
        Bodies, joints, loads (gravity with ``apply_uniform_gravity``, actuators), auxiliary
        speeds, holonomic constraints (loop closures) and nonholonomic constraints.  Its
        independent and dependent coordinates and speeds all become the model's (the engine
        chooses the dependent ones, gillespie2005 eq 11), each joint's speeds kept.
    params, inputs, forces
        As for ``Model``.
    constraint_names : sequence of str, optional
        Names of the System's holonomic constraints, then its nonholonomic ones; default
        ``holonomic_1``, ... and ``nonholonomic_1``, ....
    name : str

    Returns
    -------
    Model
        With ``constraints``: a dict of ``Constraint`` by name, in order: each
        ``QuaternionJoint``'s ``<joint>_normalization``, the holonomic constraints
        (``embed.holonomic``: Phi(q, t) = 0, differentiated as gillespie2005 eq 6), then the
        nonholonomic ones (``embed.motion``: B u + C = 0, eq 7).  ``joints`` lists the
        System's joints.
    """
    if not isinstance(system, System):
        raise ModelDefinitionError(f"model {name!r}: from_system takes a sympy.physics.mechanics "
                                   f"System, not {type(system).__name__}")
    frame = system.frame
    _check_kinematics(system, frame, name)
    loads = list(system.loads) + [ld for a in system.actuators for ld in a.to_loads()]
    q, u = list(system.q), list(system.u)
    model = cls(frame, q, u, list(system.kdes), list(system.bodies), loads,
                u_aux=list(system.u_aux), forces=forces, params=params, inputs=inputs, name=name)
    hol, nonhol = list(system.holonomic_constraints), list(system.nonholonomic_constraints)
    names = list(constraint_names) if constraint_names is not None else (
        [f"holonomic_{i + 1}" for i in range(len(hol))]
        + [f"nonholonomic_{i + 1}" for i in range(len(nonhol))])
    if len(names) != len(hol) + len(nonhol):
        raise ModelDefinitionError(
            f"model {name!r}: {len(names)} constraint names for the System's {len(hol)} "
            f"holonomic and {len(nonhol)} nonholonomic constraints")
    cons = {}
    for j in system.joints:
        if isinstance(j, QuaternionJoint):
            key = f"{j.name}_normalization"
            cons[key] = holonomic(model, key, j.normalization)
    for key, expr in zip(names, hol):
        cons[key] = holonomic(model, key, expr)
    for key, expr in zip(names[len(hol):], nonhol):
        cons[key] = motion(model, key, expr)
    if len(cons) != len(names) + sum(isinstance(j, QuaternionJoint) for j in system.joints):
        raise ModelDefinitionError(f"model {name!r}: constraint names repeat in "
                                   f"{list(names)} (or name a joint's normalization)")
    model.constraints = cons
    model.joints = tuple(system.joints)
    return model


def _check_kinematics(system, frame, name):
    """Every body's mass centre has a velocity and every rigid body an angular velocity in the
    Newtonian frame (a body no joint connects has neither), named if not."""
    for body in system.bodies:
        try:
            body.masscenter.vel(frame)
            if isinstance(body, RigidBody):
                body.frame.ang_vel_in(frame)
        except ValueError as exc:
            raise ModelDefinitionError(
                f"model {name!r}: body {body.name!r} has no velocity in the Newtonian frame "
                f"{frame} ({exc}); connect it to the System's bodies by a joint") from None


__all__ = ["QuaternionJoint", "G_matrix", "model_from_system"]
