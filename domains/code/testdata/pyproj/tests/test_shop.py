import unittest

from shop import money
from shop.invoice import calc_total, calc_total_weight, calc_totals_row
from shop.render import render


class ShopTest(unittest.TestCase):
    items = [(100, 2, 10), (250, 1, 80)]

    def test_totals(self):
        self.assertEqual(calc_total(self.items), 450)
        self.assertEqual(calc_total_weight(self.items), 100)
        self.assertEqual(calc_totals_row(self.items), "calc_total: 4.50, weight: 100")

    def test_render(self):
        self.assertIn("total 4.50", render(self.items))
        self.assertEqual(money.fmt_money(5), "0.05")


if __name__ == "__main__":
    unittest.main()
