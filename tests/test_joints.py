"""Models written as joints (``Model.from_system``, ``embed.QuaternionJoint``) against references.

- A 3D double pendulum with a slider: body A hung from O by a ``QuaternionJoint``, B hinged to
  A by a ``PinJoint``, C sliding along B by a ``PrismaticJoint``; written again here by hand
  (frames, points, ``v2pt_theory``, eq 38 of haug_pavesic2023 for the Euler parameters): the
  two models' Kane terms (F_r + F_r* = b + A_u udot) and kinematical equations agree at random
  states.
- A spatial slider-crank closed by a loop (``PinJoint``, sympy's ``SphericalJoint``,
  ``PrismaticJoint``, three holonomic loop-closure constraints): the engine's embedded
  accelerations equal those of sympy's own ``KanesMethod`` (``System.form_eoms`` with the
  dependent coordinates and speeds) at random consistent states, to 1e-10.
"""

import numpy as np
import pytest
import symengine as se
import sympy as sp
from sympy.physics.mechanics import (Point, PinJoint, PrismaticJoint, ReferenceFrame, RigidBody,
                                     SphericalJoint, System, dynamicsymbols, inertia)

from embed import (Automaton, Mode, Model, ModeLibrary, ModelDefinitionError, QuaternionJoint,
                   Simulator)

PEND = sp.symbols("m_a m_b m_c l_a l_b g ixx iyy izz ixy iyz izx")
TAU = sp.Symbol("tau")


def _G(p):
    """G(p) of haug_pavesic2023's Appendix, written out here (not the library's)."""
    e0, e1, e2, e3 = p
    return sp.Matrix([[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]])


def _inertias(frame, m, l):
    """A general inertia for body A (products too), slender ones for B and C."""
    ma, mb, mc, la, lb, g, ixx, iyy, izz, ixy, iyz, izx = PEND
    return inertia(frame, ixx, iyy, izz, ixy, iyz, izx)


def pendulum_joints():
    ma, mb, mc, la, lb, g, *_ = PEND
    p = dynamicsymbols("e0 e1 e2 e3")
    w = dynamicsymbols("w1 w2 w3 pn")
    th, uth, s, us = dynamicsymbols("th u_th s u_s")
    ground = RigidBody("ground")
    N = ground.frame
    A = RigidBody("A", mass=ma)
    A.inertia = (_inertias(A.frame, ma, la), A.masscenter)
    B = RigidBody("B", mass=mb)
    B.inertia = (inertia(B.frame, mb * lb ** 2 / 12, mb * lb ** 2 / 12, 0), B.masscenter)
    C = RigidBody("C", mass=mc)
    C.inertia = (inertia(C.frame, mc / 10, mc / 10, mc / 20), C.masscenter)
    ball = QuaternionJoint("ball", ground, A, p, w, child_point=la / 2 * A.z)
    pin = PinJoint("pin", A, B, th, uth, parent_point=-la / 2 * A.z, child_point=lb / 2 * B.z,
                   joint_axis=A.y)
    slide = PrismaticJoint("slide", B, C, s, us, parent_point=-lb / 2 * B.z, joint_axis=-B.z)
    system = System.from_newtonian(ground)
    system.add_joints(ball, pin, slide)
    system.apply_uniform_gravity(-g * N.z)
    system.add_loads((B.frame, TAU * A.y), (A.frame, -TAU * A.y))
    return Model.from_system(system, params=PEND, inputs=[TAU], name="pendulum_joints")


def pendulum_by_hand():
    ma, mb, mc, la, lb, g, *_ = PEND
    p = dynamicsymbols("e0 e1 e2 e3")
    w = dynamicsymbols("w1 w2 w3 pn")
    th, uth, s, us = dynamicsymbols("th u_th s u_s")
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    Af = ReferenceFrame("Af")
    Af.orient_quaternion(N, tuple(p))
    Af.set_ang_vel(N, w[0] * Af.x + w[1] * Af.y + w[2] * Af.z)
    Acm = O.locatenew("Acm", -la / 2 * Af.z)
    Acm.v2pt_theory(O, N, Af)
    H = O.locatenew("H", -la * Af.z)
    H.v2pt_theory(O, N, Af)
    Bf = Af.orientnew("Bf", "Axis", [th, Af.y])
    Bf.set_ang_vel(Af, uth * Af.y)
    Bcm = H.locatenew("Bcm", -lb / 2 * Bf.z)
    Bcm.v2pt_theory(H, N, Bf)
    E = H.locatenew("E", -lb * Bf.z)
    E.v2pt_theory(H, N, Bf)
    Ccm = E.locatenew("Ccm", -s * Bf.z)
    Ccm.set_vel(Bf, -us * Bf.z)
    Ccm.v1pt_theory(E, N, Bf)
    bodies = [RigidBody("A", Acm, Af, ma, (_inertias(Af, ma, la), Acm)),
              RigidBody("B", Bcm, Bf, mb, (inertia(Bf, mb * lb ** 2 / 12, mb * lb ** 2 / 12, 0),
                                           Bcm)),
              RigidBody("C", Ccm, Bf, mc, (inertia(Bf, mc / 10, mc / 10, mc / 20), Ccm))]
    loads = [(Acm, -ma * g * N.z), (Bcm, -mb * g * N.z), (Ccm, -mc * g * N.z),
             (Bf, TAU * Af.y), (Af, -TAU * Af.y)]
    pm = sp.Matrix(p)
    rates = _G(pm).T * sp.Matrix(w[:3]) / 2 + pm * w[3]
    kd = [pi.diff() - r for pi, r in zip(p, rates)] + [th.diff() - uth, s.diff() - us]
    return Model(N, list(p) + [th, s], list(w) + [uth, us], kd, bodies, loads, params=PEND,
                 inputs=[TAU], name="pendulum_by_hand")


def _terms(model):
    """b, A_u and qdot of a model as one numeric function of (q, u, params, inputs)."""
    lt = model.linear_terms()
    exprs = list(lt.b) + [c for row in lt.Au for c in row] + list(model.qdot)
    args = list(model.q) + list(model.u) + list(model.params) + list(model.inputs)
    return se.Lambdify(args, exprs)


def test_joint_built_pendulum_equals_hand_written():
    """Same mechanism, same coordinates and speeds: identical Kane terms (b, A_u = -M) and
    kinematical equations at random states (random Euler parameters on the unit sphere)."""
    mj, mh = pendulum_joints(), pendulum_by_hand()
    assert [str(s) for s in mj.q] == [str(s) for s in mh.q]
    assert [str(s) for s in mj.u] == [str(s) for s in mh.u]
    assert list(mj.constraints) == ["ball_normalization"]
    fj, fh = _terms(mj), _terms(mh)
    rng = np.random.default_rng(5)
    for _ in range(20):
        p = rng.normal(size=4)
        p /= np.linalg.norm(p)
        x = np.concatenate((p, rng.uniform(-2, 2, 2), rng.normal(size=6),
                            rng.uniform(0.5, 2, 5), [rng.uniform(1, 10)],
                            rng.uniform(1, 2, 3), rng.uniform(-0.2, 0.2, 3), rng.normal(size=1)))
        a, b = np.asarray(fj(x)), np.asarray(fh(x))
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_quaternion_joint_angular_velocity_is_eq_38():
    """The QuaternionJoint's child frame turns at omega' (its speeds, body-fixed): sympy's own
    angular velocity of the orientation A(p) (from pdot) equals it when pdot = 1/2 G^T omega'."""
    mj = pendulum_joints()
    ball = mj.joints[0]
    child, parent = ball.child_interframe, ball.parent_interframe
    assert isinstance(ball, QuaternionJoint)
    probe = ReferenceFrame("probe")
    probe.orient_quaternion(parent, tuple(ball.coordinates))     # sympy's omega from pdot
    t = dynamicsymbols._t
    rates = {pi.diff(t): -k + pi.diff(t) for pi, k in zip(ball.coordinates, ball.kdes)}
    w_sympy = probe.ang_vel_in(parent).to_matrix(probe).xreplace(rates)
    rng = np.random.default_rng(2)
    for _ in range(10):
        p = rng.normal(size=4)
        p /= np.linalg.norm(p)
        w = rng.normal(size=3)
        sub = dict(zip(ball.coordinates, p)) | dict(zip(ball.speeds, [*w, 0.0]))
        got = np.array(w_sympy.xreplace(sub), dtype=float).ravel()
        assert np.allclose(got, w, atol=1e-13)
    assert child.ang_vel_in(parent).to_matrix(child) == ball.omega


def test_from_system_names_a_body_without_velocity():
    ground = RigidBody("ground")
    loose = RigidBody("loose")
    system = System.from_newtonian(ground)
    system.add_bodies(loose)
    with pytest.raises(ModelDefinitionError, match="loose"):
        Model.from_system(system, name="broken")


# --------------------------------------------------------------- a loop against KanesMethod
CRANK = sp.symbols("r l h m1 m2 m3 g")


def slider_crank(dependent=False):
    """Crank (pin about N.z at O), rod (sympy's SphericalJoint at the crank pin, body-fixed
    angles, their rates the speeds), slider (prismatic along N.x at height h); the rod's far
    end on the slider closes the loop (3 holonomic constraints, 2 degrees of freedom: the crank
    and the rod's spin).  ``dependent``: the System also declares q_dep, u_dep (for sympy's
    KanesMethod)."""
    r, l, h, m1, m2, m3, g = CRANK
    th, w = dynamicsymbols("th w")
    a = dynamicsymbols("a1 a2 a3")
    da = dynamicsymbols("da1 da2 da3")
    s, v = dynamicsymbols("s v")
    ground = RigidBody("ground")
    N = ground.frame
    crank = RigidBody("crank", mass=m1)
    crank.inertia = (inertia(crank.frame, m1 * r ** 2 / 50, m1 * r ** 2 / 12, m1 * r ** 2 / 12),
                     crank.masscenter)
    rod = RigidBody("rod", mass=m2)
    rod.inertia = (inertia(rod.frame, m2 * l ** 2 / 40, m2 * l ** 2 / 12, m2 * l ** 2 / 11),
                   rod.masscenter)
    slider = RigidBody("slider", mass=m3)
    slider.inertia = (inertia(slider.frame, m3, m3, m3), slider.masscenter)
    j1 = PinJoint("crank_pin", ground, crank, th, w, child_point=-r / 2 * crank.x,
                  joint_axis=N.z)
    j2 = SphericalJoint("rod_ball", crank, rod, a, da, parent_point=r / 2 * crank.x,
                        child_point=-l / 2 * rod.x)
    j3 = PrismaticJoint("slide", ground, slider, s, v, parent_point=h * N.z, joint_axis=N.x)
    system = System.from_newtonian(ground)
    system.add_joints(j1, j2, j3)
    system.apply_uniform_gravity(-g * N.y)
    end = rod.masscenter.locatenew("end", l / 2 * rod.x)
    gap = end.pos_from(slider.masscenter).to_matrix(N)
    if dependent:
        system.q_ind, system.q_dep = [th, a[0]], [a[1], a[2], s]
        system.u_ind, system.u_dep = [w, da[0]], [da[1], da[2], v]
    system.add_holonomic_constraints(*gap)
    return system


def consistent(system, rng, P):
    """A state on the loop: random crank angle and rod spin, the rest by Newton; random
    independent rates, the dependent ones from the velocity constraints."""
    q = list(system.q)
    psub = dict(zip(CRANK, P))
    phi = sp.Matrix(system.holonomic_constraints).xreplace(psub)
    dep = [2, 3, 4]
    f = sp.lambdify([q], phi, "numpy")
    J = sp.lambdify([q], phi.jacobian(q), "numpy")
    x = np.array([rng.uniform(-np.pi, np.pi), rng.uniform(-1, 1), 0.3, -0.2, 1.5])
    for _ in range(50):
        x[dep] -= np.linalg.solve(np.asarray(J(x), float)[:, dep], np.asarray(f(x), float).ravel())
    assert np.abs(np.asarray(f(x), float)).max() < 1e-14
    Jx = np.asarray(J(x), float)          # the rates of these coordinates are the speeds
    ud = np.zeros(5)
    ud[:2] = rng.normal(size=2)
    ud[dep] = np.linalg.solve(Jx[:, dep], -Jx[:, :2] @ ud[:2])
    return x, ud


def numeric(matrix, q, u, params):
    """A sympy matrix in dynamicsymbols q, u and params as a numeric function f(q, u, params)
    (symengine's Lambdify: sympy's lambdify takes seconds on KanesMethod's full matrices)."""
    plain = {x: sp.Symbol(f"_{k}") for k, x in enumerate(list(q) + list(u))}
    args = list(plain.values()) + list(params)
    f = se.Lambdify(args, [se.sympify(e.xreplace(plain)) for e in matrix], cse=True)
    shape = matrix.shape
    return lambda qv, uv, pv: np.asarray(f(np.concatenate((qv, uv, pv)))).reshape(shape)


def test_loop_accelerations_match_sympy_kanes_method():
    """The engine's embedded accelerations (gillespie2005 eq 16) of the joint-built slider-crank
    equal sympy's KanesMethod (System.form_eoms with q_dep, u_dep) at random consistent states."""
    model = Model.from_system(slider_crank(), params=CRANK, name="slider_crank_3d")
    assert list(model.constraints) == ["holonomic_1", "holonomic_2", "holonomic_3"]
    aut = Automaton(model, model.constraints, {1: Mode(name="loop",
                                                        constraints=tuple(model.constraints))})
    ref = slider_crank(dependent=True)
    ref.form_eoms()
    q, u = list(ref.q), list(ref.u)
    MM, FF = numeric(ref.mass_matrix_full, q, u, CRANK), numeric(ref.forcing_full, q, u, CRANK)
    order = [[str(s.func) for s in q].index(str(x)) for x in model.q]   # ref -> model order
    lib = ModeLibrary.of(aut, "symbolic")
    rng = np.random.default_rng(9)
    for _ in range(4):
        P = [rng.uniform(0.3, 0.6), rng.uniform(1.2, 1.6), rng.uniform(-0.2, 0.2),
             *rng.uniform(0.5, 3, 3), rng.uniform(1, 10)]
        qx, ux = consistent(ref, rng, P)       # in the reference's order = the model's
        assert order == list(range(5))
        sim = Simulator(aut, dict(zip(map(str, CRANK), P)), library=lib)
        sim.start(0.0, qx, ux)
        assert np.allclose(sim.q, qx, atol=1e-13) and np.allclose(sim.u, ux, atol=1e-13)
        xd = np.linalg.solve(MM(qx, ux, P), FF(qx, ux, P).ravel())
        udot = xd[5:]
        got = sim.compiled_mode.rhs(0.0, sim.x, sim.pvec)
        ind = [i for i in range(5) if i not in sim.dep]
        assert len(ind) == 2
        assert np.allclose(got[:5], ux, atol=1e-13)
        scale = max(1.0, np.abs(udot).max())
        assert np.allclose(got[5:], udot[ind], rtol=1e-10, atol=1e-10 * scale), (got, udot)
