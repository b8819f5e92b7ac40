"""What grading decided and where it goes: the verdict, the gradebook, feedback, the LMS export."""
