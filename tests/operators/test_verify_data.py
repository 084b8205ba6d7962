"""The data check step reads a broker's PLAINTEXT listener from its registration (the only one
the check speaks); a broker with only secured listeners has none."""

from operators.reassignment.verify_data import plaintext_endpoint


def test_the_plaintext_listener_is_chosen():
    assert plaintext_endpoint("h", 9092, ("SASL_SSL://h:9094", "PLAINTEXT://h:9092")) == ("h", 9092)
    assert plaintext_endpoint("h", 9094, ("SASL_SSL://h:9094",)) is None
    assert plaintext_endpoint("h", 9092, ()) == ("h", 9092)
