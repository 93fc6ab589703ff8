# Phase 4, conflict resolution (Contracts 3 and 6): of two conflicting live
# tools the lower score loses; on equal scores the later name (tool_rank)
# loses. conflicts_with is symmetric.
conflict(A, B) :- conflicts_with(A, B).
conflict(A, B) :- conflicts_with(B, A).

beaten(Tool) :- conflict(Tool, Other), best_score(Tool, S1), best_score(Other, S2), S1 < S2.
beaten(Tool) :- conflict(Tool, Other), best_score(Tool, S), best_score(Other, S),
  tool_rank(Tool, R1), tool_rank(Other, R2), R1 > R2.

kept(Tool, Score, Phase) :- best_score(Tool, Score), best_phase(Tool, Phase), !beaten(Tool).
is_kept(Tool) :- kept(Tool, _, _).
