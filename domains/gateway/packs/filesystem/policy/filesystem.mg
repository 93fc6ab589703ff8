# Safety for the MCP filesystem server. Its destructive tools (write_file,
# edit_file, move_file) stay behind the user's confirmation, as the
# gateway's policy says for every destructive tool; create_directory is
# not destructive (upstream says so) and needs none. Nothing is waived.
# read_file is deprecated upstream (read_text_file replaces it).
prohibited(T, "deprecated upstream; use read_text_file") :- upstream_pack(U, "filesystem"), upstream_tool(U, T, "read_file").
