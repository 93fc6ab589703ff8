"""Posting entries."""


def post_entry(book, amount):
    """Add amount to the book; "post_entry" stays in this docstring."""
    book.append(amount)
    return sum(book)


def post_entry_twice(book, amount):
    post_entry(book, amount)
    return post_entry(book, amount)
