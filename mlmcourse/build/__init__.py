"""The generated editions: the release, the reading edition, the sample students and the site."""
