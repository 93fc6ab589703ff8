# Pack for the MCP filesystem server (@modelcontextprotocol/server-filesystem,
# serverInfo "secure-filesystem-server"). Its tools reach the model through
# four intents, each offering only the few tools its job needs; a tool is
# named here by its upstream name, whatever the upstream is called.

decl_intent("explore_files", "List dirs, trees, file info; find files by name or lines by text.").
decl_intent("read_files", "Read one or several text files, or a media file.").
decl_intent("edit_files", "Edit or write files; replace a word across files as one diff (asks the user first).").
decl_intent("organize_files", "Move or rename files, make dirs (moves ask first).").

fs_tool(T, Name) :- upstream_pack(U, "filesystem"), upstream_tool(U, T, Name).
# The gateway's composed tools over the server's own (rules/domain/composed.mg).
fs_macro(T, Kind) :- upstream_pack(U, "filesystem"), upstream_macro(U, T, Kind).

# explore: listing and search first, the rest as the job needs.
mandatory_for_intent("explore_files", T) :- fs_tool(T, "list_directory").
mandatory_for_intent("explore_files", T) :- fs_tool(T, "search_files").
relevant_to_intent("explore_files", T, 81) :- fs_tool(T, "directory_tree").
relevant_to_intent("explore_files", T, 79) :- fs_tool(T, "get_file_info").
relevant_to_intent("explore_files", T, 77) :- fs_tool(T, "list_allowed_directories").
# The lines that hold a text, instead of reading every file.
relevant_to_intent("explore_files", T, 85) :- fs_macro(T, "search_text").

# read: text first; several files at once; media when asked.
mandatory_for_intent("read_files", T) :- fs_tool(T, "read_text_file").
relevant_to_intent("read_files", T, 83) :- fs_tool(T, "read_multiple_files").
relevant_to_intent("read_files", T, 75) :- fs_tool(T, "read_media_file").
# read_file is deprecated upstream (read_text_file replaces it): never offered.

# edit: line-based edits (with a dry run) before whole-file writes; a
# text replaced across files is one previewed diff (replace), applied
# after one consent (apply_edits, offered with the diff a replace
# previewed: the one mandatory tool then, so the consent is asked in the
# call that previewed it).
decl_intent_fact("edit_files", "previewed_edit", "optional").
fs_open_preview(1) :- open_preview(A, _), fs_macro(A, "apply_edits").
mandatory_for_intent("edit_files", A) :- open_preview(A, _), fs_macro(A, "apply_edits").
mandatory_for_intent("edit_files", T) :- fs_tool(T, "edit_file"), !fs_open_preview(1).
relevant_to_intent("edit_files", T, 80) :- fs_tool(T, "edit_file"), fs_open_preview(1).
relevant_to_intent("edit_files", T, 83) :- fs_macro(T, "replace").
relevant_to_intent("edit_files", T, 81) :- fs_tool(T, "write_file").
relevant_to_intent("edit_files", T, 77) :- fs_tool(T, "read_text_file").
tool_next_intent(T, "edit_files", "Apply the previewed edit.") :- fs_macro(T, "replace").

# organize: a move that makes the destination's directory first, when
# the gateway composes it; else the server's own move.
fs_has_move(1) :- fs_macro(_, "move").
mandatory_for_intent("organize_files", T) :- fs_macro(T, "move").
mandatory_for_intent("organize_files", T) :- fs_tool(T, "move_file"), !fs_has_move(1).
relevant_to_intent("organize_files", T, 79) :- fs_tool(T, "move_file"), fs_has_move(1).
relevant_to_intent("organize_files", T, 81) :- fs_tool(T, "create_directory").
relevant_to_intent("organize_files", T, 75) :- fs_tool(T, "list_directory_with_sizes").

tool_next_intent(T, "read_files", "Read files you found.") :- fs_tool(T, "search_files").
tool_next_intent(T, "read_files", "Read files you found.") :- fs_tool(T, "list_directory").

# What the listings and searches answered (the gateway reads list_directory
# and search_files answers into fs_listed facts, which come back with the
# working state): with several files found, reading them at once comes first.
decl_predicate("fs_listed", "both", "A path a listing or search answered, and its kind: file, dir or match.").
decl_arg("fs_listed", 0, "path", "string").
decl_arg("fs_listed", 1, "kind", "string").
decl_intent_fact("read_files", "fs_listed", "optional").
decl_intent_fact("explore_files", "fs_listed", "optional").
fs_found(N) :- fs_listed(P, K), K != "dir" |> do fn:group_by(), let N = fn:count().
relevant_to_intent("read_files", T, 90) :- fs_tool(T, "read_multiple_files"), fs_found(N), N >= 2.
