"""The reassignment runbooks' steps: guards, throttles, leadership demotion/election, wave execution
(execute.py), verification, controller checks; the skeleton that assembles them is
:mod:`operators.runbooks.reassignment`, the wave book, stall causes and throttle record are in
:mod:`procedures.waves`."""
