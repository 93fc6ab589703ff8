// The product list: every product of api/products.json, narrowed by the
// search box (a case-insensitive substring of the name) and the category.
let products = [];
const money = (cents) => "$" + (cents / 100).toFixed(2);

function render() {
  const q = document.getElementById("q").value.trim().toLowerCase();
  const cat = document.getElementById("category").value;
  const shown = products.filter((p) => (!q || p.name.toLowerCase().includes(q)) && (!cat || p.category === cat));
  const list = document.getElementById("products");
  list.replaceChildren(
    ...shown.map((p) => {
      const li = document.createElement("li");
      const a = Object.assign(document.createElement("a"), { href: "product.html?id=" + p.id, textContent: p.name });
      li.append(a, ` ${p.category}, ${money(p.price_cents)}`);
      return li;
    }),
  );
  document.getElementById("count").textContent = shown.length === 1 ? "1 product" : `${shown.length} products`;
}

document.getElementById("filters").addEventListener("submit", (e) => e.preventDefault());
document.getElementById("q").addEventListener("input", render);
document.getElementById("category").addEventListener("change", render);
fetch("api/products.json")
  .then((r) => r.json())
  .then((all) => {
    products = all;
    render();
  });
