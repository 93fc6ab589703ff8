# Manifest declarations of the code domain, beside the workspace domain's
# (profile.mg): the intents a language server answers and their facts.

decl_intent("symbols", "Find a symbol's definition and references: find_symbol(name, references, path).").
decl_intent("refactor", "Rename a symbol, move a package or module with its imports, organise imports; one diff, applied once: rename_symbol(name, new_name, path, line), move_code(from, to), organize_imports(path).").
decl_intent("diagnose", "Compiler and type errors: diagnostics(path).").

decl_intent_fact("symbols", "symbol", "optional").
decl_intent_fact("refactor", "symbol", "optional").
decl_intent_fact("refactor", "mentioned", "optional").
decl_intent_fact("refactor", "change", "optional").
decl_intent_fact("refactor", "code_previewed", "optional").
decl_intent_fact("diagnose", "mentioned", "optional").

decl_predicate("symbol", "both", "A symbol named or found.").
decl_arg("symbol", 0, "name", "string").

decl_predicate("code_previewed", "both", "A change rename_symbol, move_code or organize_imports previewed (they return this fact).").
decl_arg("code_previewed", 0, "handle", "string").
decl_arg("code_previewed", 1, "diff", "string").
