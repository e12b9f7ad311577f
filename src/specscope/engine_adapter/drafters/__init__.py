"""Who proposes the draft tokens: n-gram lookup and a draft model (``drafter``), the target's own MTP head
(``mtp``), and the oracle what-if (``oracle``)."""
