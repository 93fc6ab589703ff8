// A product's detail page: product.html?id=N shows product N's fields.
const id = Number(new URLSearchParams(location.search).get("id"));
fetch("api/products.json")
  .then((r) => r.json())
  .then((all) => {
    const p = all.find((x) => x.id === id);
    if (!p) {
      document.getElementById("name").textContent = "Product not found";
      document.getElementById("error").textContent = "No product with id " + String(id).slice(0, 20);
      return;
    }
    document.title = p.name + " - Outpost";
    document.getElementById("name").textContent = p.name;
    document.getElementById("description").textContent = p.description;
    const dl = document.getElementById("fields");
    for (const [k, v] of [["Category", p.category], ["Price", "$" + (p.price_cents / 100).toFixed(2)], ["Weight", p.weight], ["Warranty", p.warranty], ["SKU", p.sku]]) {
      dl.append(Object.assign(document.createElement("dt"), { textContent: k }), Object.assign(document.createElement("dd"), { textContent: v }));
    }
  });
