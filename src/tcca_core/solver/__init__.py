"""The CP-ALS solver behind TCCA and KTCCA, one engine of ``algorithm=`` per file."""
