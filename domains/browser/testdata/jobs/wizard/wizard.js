// A three-step sign-up wizard. Step 1: name and work email; step 2: plan,
// seats and a start date, which must be a weekday; step 3: a password of
// at least 10 characters with a digit, and the terms. Errors are
// role=alert messages beside the field, which gets aria-invalid.
const $ = (id) => document.getElementById(id);

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

function show(n) {
  for (const i of [1, 2, 3]) $("step" + i).hidden = i !== n;
}

let step = 1;
document.querySelectorAll(".back").forEach((b) => b.addEventListener("click", () => show(--step)));

$("step1").addEventListener("submit", (e) => {
  e.preventDefault();
  const email = $("email").value.trim();
  const ok = [
    check("name", $("name").value.trim() ? "" : "Enter your name"),
    check("email", !email ? "Enter your work email" : /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email) ? "" : "Enter a valid email address"),
  ].every(Boolean);
  if (ok) show(step = 2);
});

$("step2").addEventListener("submit", (e) => {
  e.preventDefault();
  const seats = Number($("seats").value);
  const start = $("start").value;
  const day = start ? new Date(start + "T12:00:00Z").getUTCDay() : -1;
  const ok = [
    check("seats", Number.isInteger(seats) && seats >= 1 && seats <= 50 ? "" : "Seats must be 1 to 50"),
    check("start", !start ? "Enter a start date" : day === 0 || day === 6 ? "The start date must be a weekday (Monday to Friday)" : ""),
  ].every(Boolean);
  if (ok) show(step = 3);
});

$("step3").addEventListener("submit", (e) => {
  e.preventDefault();
  const pw = $("password").value;
  const ok = [
    check("password", pw.length >= 10 && /\d/.test(pw) ? "" : "Use at least 10 characters, one of them a digit"),
    check("terms", $("terms").checked ? "" : "Accept the terms to start your trial"),
  ].every(Boolean);
  if (!ok) return;
  show(0);
  const plan = document.querySelector("input[name=plan]:checked").value;
  $("welcome").textContent = `Welcome, ${$("name").value.trim()}! Your ${plan} trial for ${$("seats").value} seats at ${$("company").value.trim() || "your company"} starts on ${$("start").value} (account #2048).`;
});
