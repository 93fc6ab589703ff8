"""Rendering of invoices as text."""

import shop.money
from shop import invoice
from shop.invoice import calc_total, calc_totals_row

HELP = """Say calc_total to get the total.
import shop.money is how this module formats amounts."""


def render(items):
    lines = [calc_totals_row(items)]
    lines.append("total " + shop.money.fmt_money(calc_total(items)))
    lines.append("weight %d" % invoice.calc_total_weight(items))
    return "\n".join(lines)
