"""Reading amounts."""

from ledger.core import post_entry


def read(lines):
    book = []
    for line in lines:
        post_entry(book, int(line))
    return book
