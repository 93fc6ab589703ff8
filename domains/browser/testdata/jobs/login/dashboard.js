// The dashboard loads its two data requests: the accounts (a table) and
// the notifications (whose service fails: HTTP 500 with a JSON error).
document.getElementById("signout").addEventListener("click", () => {
  document.cookie = "sid=; path=/; max-age=0";
});

const money = (cents) => "$" + (cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2 });

fetch("api/accounts.json")
  .then((r) => {
    if (!r.ok) throw new Error("HTTP " + r.status);
    return r.json();
  })
  .then((accounts) => {
    const body = document.querySelector("#accounts tbody");
    body.replaceChildren();
    for (const a of accounts) {
      const tr = document.createElement("tr");
      for (const v of [a.account, a.owner, money(a.balance_cents)]) {
        const td = document.createElement("td");
        td.textContent = v;
        tr.append(td);
      }
      body.append(tr);
    }
  })
  .catch((e) => {
    console.error("Failed to load accounts: " + e.message);
    document.querySelector("#accounts tbody").replaceChildren();
  });

fetch("api/notifications")
  .then(async (r) => {
    if (!r.ok) {
      const body = await r.json().catch(() => ({}));
      throw new Error("HTTP " + r.status + (body.error ? " " + body.error : ""));
    }
    return r.json();
  })
  .then((items) => {
    const list = document.getElementById("notifications");
    list.replaceChildren(...items.map((n) => Object.assign(document.createElement("li"), { textContent: n.text })));
  })
  .catch((e) => {
    console.error("Failed to load notifications: " + e.message);
    document.getElementById("notifications").replaceChildren();
    document.getElementById("notifications-error").textContent = "Notifications unavailable";
  });
