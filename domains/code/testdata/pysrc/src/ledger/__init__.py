"""A tiny ledger."""
