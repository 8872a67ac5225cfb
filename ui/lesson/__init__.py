"""The guided lesson: steps that walk the articles' argument on the live model (``guide``)."""
