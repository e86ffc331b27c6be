"""Reports of compiled programs: costs, parameters, precision and what is revealed."""
