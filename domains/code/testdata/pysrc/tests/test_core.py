import unittest

from ledger import core
from ledger.core import post_entry, post_entry_twice
from ledger.io.reader import read


class CoreTest(unittest.TestCase):
    def test_post(self):
        self.assertEqual(post_entry([], 3), 3)
        self.assertEqual(post_entry_twice([], 2), 4)
        self.assertEqual(core.post_entry([1], 1), 2)

    def test_read(self):
        self.assertEqual(read(["1", "2"]), [1, 2])
