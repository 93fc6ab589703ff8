// The invoice of invoice.html?order=N: its items and total.
const id = Number(new URLSearchParams(location.search).get("order"));
const money = (cents) => "$" + (cents / 100).toFixed(2);
fetch("api/orders.json")
  .then((r) => r.json())
  .then((orders) => {
    const o = orders.find((x) => x.id === id);
    if (!o) {
      document.getElementById("error").textContent = "No order with number " + String(id).slice(0, 20);
      return;
    }
    document.title = `Invoice for order #${o.id} - Stationer`;
    document.getElementById("title").textContent = `Invoice for order #${o.id}`;
    let total = 0;
    const body = document.querySelector("#items tbody");
    for (const it of o.items) {
      total += it.qty * it.price_cents;
      const tr = document.createElement("tr");
      for (const v of [it.item, String(it.qty), money(it.price_cents), money(it.qty * it.price_cents)]) tr.append(Object.assign(document.createElement("td"), { textContent: v }));
      body.append(tr);
    }
    document.getElementById("total").textContent = "Total: " + money(total);
  });
