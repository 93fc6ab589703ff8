// Package explain is the kernel's last stage: it reads a finished
// evaluation (an eval.Run) for rule coverage ([CoverageOf], Spec 09
// section 6: which rules fired, which are dormant and why) and proofs
// ([Proofs]: a derivation of each selected tool, re-matched against the
// final store, why each candidate was dropped, and the client facts no
// rule reads).
package explain
