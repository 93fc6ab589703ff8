"""A one-off script: prints a sample invoice."""

from shop.money import fmt_money
from shop.render import render

if __name__ == "__main__":
    print(render([(100, 2, 10)]), fmt_money(1))
