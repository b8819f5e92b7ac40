"""What crosses between the trusted kernel and a student process: messages, frames, values,
shared inputs, and replies capped before a reader sees them."""
