//! Accounts: the console (sign-in, passwords, sites and their settings), lockout and the security headers.
//!
//! One test binary of several areas (each a module), so CI links it once.

mod console;
mod console_password;
mod console_sites;
mod lockout;
mod security;
