# Phase 6, final output: the validated, conflict-free set. The kernel renders
# every final_selected(Tool, Score, PhaseName) into a macro-tool.
final_selected(Tool, Score, Name) :- kept(Tool, Score, Phase), !unsatisfiable(Tool), !excluded(Tool), phase_name(Phase, Name).
final_selected(Tool, 80, Name) :- dependency_added(Tool), !excluded(Tool), phase_name(3, Name).

# Why candidates were dropped, for proof hints: Phase is the phase name.
dropped(Tool, "exclusion") :- proposed(Tool, _, _), excluded(Tool).
dropped(Tool, "conflict") :- best_score(Tool, _), beaten(Tool).
dropped(Tool, "dependency") :- kept(Tool, _, _), unsatisfiable(Tool).
