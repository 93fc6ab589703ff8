# Phase 2, exclusion: a prohibited tool never appears, whatever its score
# (Contract 2). Exclusion is applied before scoring, conflicts and
# dependencies, and again at the final gate.
excluded(Tool) :- prohibited(Tool, _).
