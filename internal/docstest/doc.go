// Package docstest holds the tests that keep the project's Markdown true:
// README.md and docs/*.md render as intended (no stray code fences), their
// relative links and anchors exist, and the README's curl walkthrough
// works against a real server. It has no code of its own.
package docstest
