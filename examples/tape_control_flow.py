"""Python control flow under a tape (TF guide: "Control flow")."""

import s2sgrad as sg

x = sg.constant(1.0)
v0 = sg.Variable(2.0)
v1 = sg.Variable(2.0)
with sg.GradientTape(persistent=True) as tape:
    tape.watch(x)
    if x > 0.0:
        result = v0
    else:
        result = v1**2
dv0, dv1 = tape.gradient(result, [v0, v1])
print(dv0)
print(dv1)
print(tape.gradient(result, x))  # the condition carries no gradient
