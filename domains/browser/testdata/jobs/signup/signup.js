// A two-step sign-up form. Step 1 checks the name and the email (errors
// are role=alert messages next to the field, which gets aria-invalid);
// step 2 needs a country and the terms accepted, then creates the account.
const $ = (id) => document.getElementById(id);

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

$("step1").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("name").value.trim();
  const email = $("email").value.trim();
  const okName = check("name", name ? "" : "Enter your name");
  const okEmail = check("email", !email ? "Enter your email" : /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email) ? "" : "Enter a valid email address, like name@example.com");
  if (!okName) $("name").focus();
  else if (!okEmail) $("email").focus();
  if (okName && okEmail) {
    $("step1").hidden = true;
    $("step2").hidden = false;
    $("country").focus();
  }
});

$("back").addEventListener("click", () => {
  $("step2").hidden = true;
  $("step1").hidden = false;
});

$("step2").addEventListener("submit", (e) => {
  e.preventDefault();
  const okCountry = check("country", $("country").value ? "" : "Choose your country");
  const okTerms = check("terms", $("terms").checked ? "" : "Accept the terms to create an account");
  if (!okCountry || !okTerms) return;
  $("step2").hidden = true;
  $("welcome").textContent = `Welcome, ${$("name").value.trim()}! Account #1042 on the ${$("plan").value} plan`;
});
