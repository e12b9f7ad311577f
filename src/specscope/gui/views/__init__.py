"""One module per page: live, breakdown, division, cases; plus the verdict bar."""
