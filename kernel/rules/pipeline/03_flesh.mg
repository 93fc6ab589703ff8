# Phase 3, flesh: further relevant tools with their scores (Contract 1).
proposed(Tool, Score, 2) :- intent(Intent), relevant_to_intent(Intent, Tool, Score).

# A tool that survives exclusion, with every score and phase proposing it.
live(Tool, Score, Phase) :- proposed(Tool, Score, Phase), !excluded(Tool).

# The best score and the earliest phase of each live tool. One aggregation
# rule per head predicate (MANGLE_NOTES section 2).
best_score(Tool, Max) :- live(Tool, Score, _) |> do fn:group_by(Tool), let Max = fn:max(Score).
best_phase(Tool, Min) :- live(Tool, _, Phase) |> do fn:group_by(Tool), let Min = fn:min(Phase).
