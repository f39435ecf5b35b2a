"""The running hybrid system (gillespie2005 Sec 4-5): simulator, switching and reset maps, running state, events, integrators, projection, activation, impacts."""
