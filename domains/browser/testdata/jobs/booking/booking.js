// A one-page booking form with ten kinds of widget: an ARIA combobox
// whose options load by fetch (City), a date, a time, a number, radio
// buttons, a range slider, a select multiple, a textarea, a field in an
// open shadow root (Loyalty number) and a checkbox. Booking checks the
// city was chosen from the list, the date, the time and the policy; the
// outcome repeats every value, so a wrong one shows.
const $ = (id) => document.getElementById(id);

// A field in an open shadow root, labelled inside it.
customElements.define("loyalty-number", class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" }).innerHTML =
      '<label for="n">Loyalty number</label> <input id="n" autocomplete="off">';
  }
  get value() { return this.shadowRoot.getElementById("n").value.trim(); }
});

$("floor").addEventListener("input", () => { $("floor-value").textContent = $("floor").value; });

// The combobox: typing loads the cities (api/cities.json) and lists the
// ones that start with the text as options; an option is chosen by a
// click or by the arrow keys and Enter.
const city = $("city"), list = $("city-list");
let chosen = "", active = -1, asked = 0;
function open(names) {
  list.replaceChildren(...names.map((n, i) => {
    const li = document.createElement("li");
    li.id = "city-" + i;
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", "false");
    li.textContent = n;
    li.addEventListener("mousedown", (e) => e.preventDefault());
    li.addEventListener("click", () => choose(n));
    return li;
  }));
  list.hidden = names.length === 0;
  city.setAttribute("aria-expanded", String(!list.hidden));
  active = -1;
  city.removeAttribute("aria-activedescendant");
}
function close() {
  list.hidden = true;
  city.setAttribute("aria-expanded", "false");
  city.removeAttribute("aria-activedescendant");
}
function choose(name) {
  chosen = name;
  city.value = name;
  close();
  check("city", "");
}
function highlight(i) {
  const items = list.querySelectorAll("[role=option]");
  if (items.length === 0) return;
  active = (i + items.length) % items.length;
  items.forEach((li, j) => li.setAttribute("aria-selected", String(j === active)));
  city.setAttribute("aria-activedescendant", items[active].id);
}
city.addEventListener("input", async () => {
  chosen = "";
  const text = city.value.trim().toLowerCase();
  const n = ++asked;
  if (!text) { close(); return; }
  const res = await fetch("api/cities.json");
  const names = await res.json();
  if (n !== asked) return; // a later keystroke asked again
  open(names.filter((c) => c.toLowerCase().startsWith(text)).slice(0, 8));
});
city.addEventListener("keydown", (e) => {
  if (e.key === "ArrowDown") { e.preventDefault(); highlight(active + 1); }
  else if (e.key === "ArrowUp") { e.preventDefault(); highlight(active - 1); }
  else if (e.key === "Enter" && !list.hidden && active >= 0) {
    e.preventDefault();
    choose(list.querySelectorAll("[role=option]")[active].textContent);
  } else if (e.key === "Escape") close();
});
city.addEventListener("blur", () => setTimeout(close, 150));

// check sets or clears the error of one field and returns whether it is valid.
function check(id, message) {
  const field = $(id);
  if (message) {
    field.setAttribute("aria-invalid", "true");
    $(id + "-error").textContent = message;
    return false;
  }
  field.removeAttribute("aria-invalid");
  $(id + "-error").textContent = "";
  return true;
}

$("booking").addEventListener("submit", (e) => {
  e.preventDefault();
  const ok = [
    check("city", chosen ? "" : "Choose a city from the list"),
    check("checkin", $("checkin").value ? "" : "Enter the check-in date"),
    check("arrival", $("arrival").value ? "" : "Enter your arrival time"),
    check("policy", $("policy").checked ? "" : "Accept the cancellation policy to book"),
  ].every(Boolean);
  if (!ok) {
    $("outcome").textContent = "";
    return;
  }
  const room = document.querySelector("input[name=room]:checked").value;
  const extras = [...$("extras").selectedOptions].map((o) => o.value);
  const guests = Number($("guests").value);
  $("outcome").textContent = `Booking BK-4711 confirmed: ${room} in ${chosen} for ${guests} ${guests === 1 ? "guest" : "guests"}, ` +
    `${$("checkin").value} at ${$("arrival").value}, floor ${$("floor").value}, ` +
    `extras ${extras.length ? extras.join(" and ") : "none"}, loyalty number ${$("loyalty").value || "none"}, ` +
    `requests: ${$("requests").value.trim() || "none"}.`;
});
