"""Formatting of amounts."""


def fmt_money(cents):
    return "%d.%02d" % (cents // 100, cents % 100)
