"""A small shop: invoices and their rendering."""
