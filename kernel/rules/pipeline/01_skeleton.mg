# Phase 1, skeleton: tools mandatory for the intent (Spec 10 section 4.5).
# Phases are numbered so that the lowest number wins when a tool is proposed
# by several phases: 1 skeleton, 2 flesh, 3 dependency.
phase_name(1, "skeleton").
phase_name(2, "flesh").
phase_name(3, "dependency").

proposed(Tool, 100, 1) :- intent(Intent), mandatory_for_intent(Intent, Tool).
