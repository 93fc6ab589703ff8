# The code domain's decisions. External predicates (computed by Go):
#   code_language(Language, State): a language with files in a root and
#     the state of its server: running, available, missing, failed,
#     too_many_files;
#   code_entry(Path, Language, Kind): a mentioned path's language (go,
#     python, none) and kind (file, dir, missing, outside);
#   open_code_edit(Handle, Diff, Until): a previewed change this server
#     holds under that handle with that diff, unexpired.

# ---- signals ----
lsp_ready(Lang) :- code_language(Lang, "running").
lsp_ready(Lang) :- code_language(Lang, "available").
# A server that failed is started again after its backoff: still offered.
lsp_ready(Lang) :- code_language(Lang, "failed").
has_lsp(1) :- lsp_ready(_).
lsp_missing(Lang) :- code_language(Lang, "missing").
lsp_missing(Lang) :- code_language(Lang, "too_many_files").
has_missing_lsp(1) :- lsp_missing(_).

# What move_code moves: a Go package directory, a Python module or
# package, with a language server or without one (the imports are found
# by parsing; the server only reports diagnostics afterwards).
movable(Path) :- mentioned(Path), code_entry(Path, "go", "dir").
movable(Path) :- mentioned(Path), code_entry(Path, "python", "file").
movable(Path) :- mentioned(Path), code_entry(Path, "python", "dir").
has_movable(1) :- movable(_).
source_file(Path) :- mentioned(Path), code_entry(Path, Lang, "file"), lsp_ready(Lang).
has_source_file(1) :- source_file(_).

has_open_code_edit(1) :- open_code_edit(_, _, _).
last_code_edit_expiry(Max) :- open_code_edit(_, _, U) |> do fn:group_by(), let Max = fn:max(U).

# ---- symbols ----
mandatory_for_intent("symbols", "find_symbol") :- intent("symbols"), has_lsp(1).
# Without a language server: text search, and the answer says why.
mandatory_for_intent("symbols", "search") :- intent("symbols"), !has_lsp(1).
tool_instructions("search", "No language server runs for this code: search finds text, not symbols (see the manifest's x-code).") :- intent("symbols"), !has_lsp(1).
tool_instructions("find_symbol", "Some languages here have no language server: search their text with search.") :- intent("symbols"), has_lsp(1), has_missing_lsp(1).
relevant_to_intent("symbols", "search", 40) :- intent("symbols"), has_lsp(1), has_missing_lsp(1).

tool("find_symbol").
tool_action("find_symbol", "find_symbol").
tool_description("find_symbol", "Where a symbol is defined (language server), and with references=true every reference as path:line: text.").
tool_summary("find_symbol", "Find a symbol and its references.").
tool_param("find_symbol", "name", "string", "Exact name; Type.Method for a method.").
tool_param_required("find_symbol", "name").
tool_param("find_symbol", "references", "boolean", "").
tool_param_default("find_symbol", "references", /true).
tool_param("find_symbol", "path", "string", "Only definitions in this file or directory.").
tool_param("find_symbol", "language", "string", "").
tool_param_enum("find_symbol", "language", Lang) :- lsp_ready(Lang).
tool_idempotent("find_symbol").
tool_next_intent("find_symbol", "refactor", "Rename the symbol.").

# ---- refactor ----
# Once a change is previewed, applying it is what follows: apply_code_edit
# is then the one mandatory tool, its diff fixed by the preview, so the
# user is asked once, shown the diff, in the call that previewed it.
mandatory_for_intent("refactor", "apply_code_edit") :- has_open_code_edit(1).
mandatory_for_intent("refactor", "rename_symbol") :- intent("refactor"), has_lsp(1), !has_open_code_edit(1), !wants("move"), !wants("imports").
relevant_to_intent("refactor", "rename_symbol", 40) :- intent("refactor"), has_lsp(1), !has_open_code_edit(1), wants("move").
mandatory_for_intent("refactor", "move_code") :- has_movable(1), !has_open_code_edit(1), !wants("rename"), !wants("imports").
# Without a mentioned path move_code is still offered (its from is then
# any path, which the move checks), so a model calling it by the name the
# intent's description gives reaches it in one call.
mandatory_for_intent("refactor", "move_code") :- intent("refactor"), !has_mentioned(1), !has_open_code_edit(1), !wants("rename"), !wants("imports").
mandatory_for_intent("refactor", "organize_imports") :- wants("imports"), has_lsp(1), !has_open_code_edit(1).
relevant_to_intent("refactor", "organize_imports", 30) :- intent("refactor"), has_lsp(1), !has_open_code_edit(1), !wants("imports").
tool_instructions("move_code", "No language server runs for this code: imports are still updated, but no diagnostics follow.") :- intent("refactor"), !has_lsp(1).

tool("rename_symbol").
tool_action("rename_symbol", "rename_symbol").
tool_description("rename_symbol", "Rename a symbol and every reference to it (language server; strings and comments stay); previews one diff.").
tool_summary("rename_symbol", "Rename a symbol everywhere.").
tool_param("rename_symbol", "name", "string", "").
tool_param_required("rename_symbol", "name").
tool_param("rename_symbol", "new_name", "string", "").
tool_param_required("rename_symbol", "new_name").
tool_param("rename_symbol", "path", "string", "File or directory of the definition, when several share the name.").
tool_param("rename_symbol", "line", "integer", "Line of the definition.").
tool_param("rename_symbol", "language", "string", "").
tool_param_enum("rename_symbol", "language", Lang) :- lsp_ready(Lang).
tool_param_default("rename_symbol", "name", Name) :- symbol(Name).
tool_idempotent("rename_symbol").
tool_next_intent("rename_symbol", "refactor", "Apply the previewed change.").

tool("move_code").
tool_action("move_code", "move_code").
tool_description("move_code", "Move a Go package directory or a Python module/package and update every import of it; previews one diff.").
tool_summary("move_code", "Move code with its imports.").
tool_param("move_code", "from", "string", "").
tool_param_required("move_code", "from").
tool_param_enum("move_code", "from", Path) :- movable(Path).
tool_param("move_code", "to", "string", "Must not exist; parents are created.").
tool_param_required("move_code", "to").
tool_idempotent("move_code").
tool_next_intent("move_code", "refactor", "Apply the previewed change.").

tool("organize_imports").
tool_action("organize_imports", "organize_imports").
tool_description("organize_imports", "Sort imports and drop unused ones (language server); previews one diff.").
tool_summary("organize_imports", "Organise a file's imports.").
tool_param("organize_imports", "path", "string", "").
tool_param_required("organize_imports", "path").
tool_param_default("organize_imports", "path", Path) :- source_file(Path).
tool_idempotent("organize_imports").
tool_next_intent("organize_imports", "refactor", "Apply the previewed change.").

tool("apply_code_edit").
tool_action("apply_code_edit", "apply_code_edit").
tool_description("apply_code_edit", "Write a previewed change (all files or none) and show the diagnostics after it.").
tool_summary("apply_code_edit", "Apply the previewed change.").
tool_param("apply_code_edit", "diff", "string", "").
tool_param_required("apply_code_edit", "diff").
tool_param_enum("apply_code_edit", "diff", Diff) :- open_code_edit(_, Diff, _).
tool_valid_until("apply_code_edit", Until) :- last_code_edit_expiry(Until).
tool_next_intent("apply_code_edit", "diagnose", "Check the code.").

# ---- diagnose ----
mandatory_for_intent("diagnose", "diagnostics") :- intent("diagnose"), has_lsp(1).
tool_instructions("search", "No language server runs for this code, so there are no diagnostics; search finds text.") :- intent("diagnose"), !has_lsp(1).
mandatory_for_intent("diagnose", "search") :- intent("diagnose"), !has_lsp(1).

tool("diagnostics").
tool_action("diagnostics", "diagnostics").
tool_description("diagnostics", "Compiler and type errors of a file or directory (default: the root) from the language servers.").
tool_summary("diagnostics", "Show diagnostics.").
tool_param("diagnostics", "path", "string", "").
tool_param_default("diagnostics", "path", Path) :- intent("diagnose"), source_file(Path).
tool_idempotent("diagnostics").

# ---- side effects ----
action_effect("apply_code_edit", "filesystem").
pure_action("find_symbol").
pure_action("rename_symbol").
pure_action("move_code").
pure_action("organize_imports").
pure_action("diagnostics").
