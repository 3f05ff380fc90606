"""`nar tui`: a Textual browser of the zoo and the user's scans (`app`), over plain data functions
(`data`) that call the library like the commands do. Imports textual only from `app`; browsing
imports no torch."""
