// The order list: each order's row has a Delete button, which asks for
// confirmation first, and a link opening its invoice in a new tab.
fetch("api/orders.json")
  .then((r) => r.json())
  .then((orders) => {
    const body = document.querySelector("#orders tbody");
    body.replaceChildren();
    for (const o of orders) {
      const tr = document.createElement("tr");
      tr.id = "order-" + o.id;
      for (const v of ["#" + o.id, o.customer, o.date, o.status]) tr.append(Object.assign(document.createElement("td"), { textContent: v }));
      const actions = document.createElement("td");
      const del = Object.assign(document.createElement("button"), { type: "button", textContent: `Delete order #${o.id}` });
      del.addEventListener("click", () => {
        if (!confirm(`Delete order #${o.id}?`)) {
          document.getElementById("status").textContent = `Order #${o.id} kept`;
          return;
        }
        tr.remove();
        document.getElementById("status").textContent = `Order #${o.id} deleted`;
      });
      const inv = Object.assign(document.createElement("a"), { href: "invoice.html?order=" + o.id, target: "_blank", textContent: `Open invoice of order #${o.id}` });
      actions.append(del, " ", inv);
      tr.append(actions);
      body.append(tr);
    }
  });
