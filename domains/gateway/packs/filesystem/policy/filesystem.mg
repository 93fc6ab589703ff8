# Safety for the MCP filesystem server. Its destructive tools (write_file,
# edit_file, move_file) stay behind the user's confirmation, as the
# gateway's policy says for every destructive tool; create_directory is
# not destructive (upstream says so) and needs none. Nothing is waived.
# read_file is deprecated upstream (read_text_file replaces it).
# What changes files needs the user's confirmation whatever the
# upstream's annotations say (an upstream that marks write_file read-only
# does not lower it).
fs_confirmed("write_file").
fs_confirmed("edit_file").
fs_confirmed("move_file").
pack_confirms(T) :- upstream_pack(U, "filesystem"), upstream_tool(U, T, Name), fs_confirmed(Name).
prohibited(T, "deprecated upstream; use read_text_file") :- upstream_pack(U, "filesystem"), upstream_tool(U, T, "read_file").
