# Phase 5, dependency completeness (Contract 4): every dependency of a kept
# tool is added (phase 3, score 80) unless it is excluded or lost a
# conflict; then the dependent is removed instead.
requires_closure(Tool, Dep) :- tool_requires(Tool, Dep).
requires_closure(Tool, Dep) :- requires_closure(Tool, Mid), tool_requires(Mid, Dep).

unsatisfiable(Tool) :- kept(Tool, _, _), requires_closure(Tool, Dep), excluded(Dep).
unsatisfiable(Tool) :- kept(Tool, _, _), requires_closure(Tool, Dep), beaten(Dep).

# A dependency that would have to be added must not bring back a conflict
# (Contract 3): not with a kept tool, nor with another dependency to add.
needed(Dep) :- kept(Tool, _, _), requires_closure(Tool, Dep), !is_kept(Dep).
unsatisfiable(Tool) :- kept(Tool, _, _), requires_closure(Tool, Dep), needed(Dep), conflict(Dep, Other), is_kept(Other).
unsatisfiable(Tool) :- kept(Tool, _, _), requires_closure(Tool, Dep), needed(Dep), conflict(Dep, Other), needed(Other).

dependency_added(Dep) :- kept(Tool, _, _), !unsatisfiable(Tool), requires_closure(Tool, Dep), !is_kept(Dep).
