// The sign-in form: the one account is ada@example.com / s3cret; a good
// sign-in sets the session cookie and opens the dashboard.
document.getElementById("login").addEventListener("submit", (e) => {
  e.preventDefault();
  const email = document.getElementById("email").value.trim();
  const password = document.getElementById("password").value;
  if (email === "ada@example.com" && password === "s3cret") {
    document.cookie = "sid=ada; path=/; SameSite=Lax";
    location.href = "dashboard.html";
    return;
  }
  document.getElementById("error").textContent = "Wrong email or password";
});
