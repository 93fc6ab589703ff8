"""Invoice arithmetic."""

from shop.money import fmt_money


def calc_total(items):
    """Sum of price times quantity of the items, in cents."""
    return sum(price * qty for price, qty, _ in items)


def calc_total_weight(items):
    """Weight of the items in grams."""
    return sum(weight * qty for _, qty, weight in items)


def calc_totals_row(items):
    # The label names calc_total on purpose: it must stay as it is.
    return "calc_total: %s, weight: %d" % (fmt_money(calc_total(items)), calc_total_weight(items))
