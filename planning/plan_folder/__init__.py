"""The plan folder (``<run>/plan/``): its reader (:mod:`planning.plan_folder.read`, what every runbook
step imports) and its writer (:mod:`planning.plan_folder.write`, the plan job and the in-task plan
steps), side by side so the format has one home. Import the side you need; nothing is re-exported
here, so a reader does not load the writer's encoders."""
