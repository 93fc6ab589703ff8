// Package rules embeds the kernel's own rule layers: schema (the protocol
// vocabulary and contracts, highest trust) and pipeline (the six-phase
// selection pipeline, lowest trust). kernel/load reads them as layers.
package rules

import "embed"

// FS holds schema/*.mg and pipeline/*.mg.
//
//go:embed schema pipeline
var FS embed.FS
