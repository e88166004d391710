"""What the transaction and group coordinators share: internal-topic logs and record formats."""
