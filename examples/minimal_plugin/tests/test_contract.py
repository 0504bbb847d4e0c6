"""The plugin's own contract test: every item of icltheory's claim contract, one test each."""

from icltheory.testing import contract_test

test_contract = contract_test("minimal.second-moment")
