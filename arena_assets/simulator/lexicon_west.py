"""Phrase lists for the Latin-script languages (en, es, fr, de, pt, it).

Each language gives request templates (``ask``, with ``{x}``), topic phrases per category,
filler sentences, follow-ups, answer sentences, header words, greetings (popular prompts),
an identity sentence (``{name}``, ``{org}``), a PII carrier (``{pii}``) and a word to insert
for near-duplicates. Written by hand so that a language identifier recognises them.
"""

from __future__ import annotations

EN = {
    "ask": [
        "Can you help me with {x}?",
        "Please explain {x} step by step.",
        "I have a question about {x}.",
        "What is the best way to handle {x}?",
    ],
    "topics": {
        "coding": [
            "a Python function that removes duplicates from a list",
            "a SQL query that joins two tables",
            "a bug in my JavaScript code",
        ],
        "math": [
            "the derivative of a polynomial",
            "a probability problem with two dice",
            "solving a system of linear equations",
        ],
        "creative_writing": [
            "a short poem about the ocean",
            "a story about a lost cat in the city",
        ],
        "instruction_following": [
            "a summary of this text in exactly three sentences",
            "a list of five ideas without using the word good",
        ],
        "hard_multistep": [
            "planning a budget for a trip to three cities",
            "comparing two job offers with different salaries and benefits",
        ],
        "chit_chat": ["my plans for the weekend", "what you think about rainy days"],
        "captioning": ["a description of this picture", "a caption for this photo"],
        "ocr": ["the text written in this image", "reading the numbers on this receipt"],
        "entity_recognition": [
            "the building shown in this photo",
            "the famous person in this picture",
        ],
        "humor": ["why this meme is funny", "the joke in this cartoon"],
        "homework": [
            "the exercise in this photo of my textbook",
            "the geometry problem in this picture",
        ],
        "diagram": ["the flowchart in this image", "the chart in this screenshot"],
    },
    "extra": [
        "Thank you in advance.",
        "I need it for work tomorrow.",
        "Please keep it simple.",
        "My teacher asked me to do this.",
    ],
    "follow": [
        "Can you make it shorter?",
        "Give me another example, please.",
        "Why is that the case?",
    ],
    "answer": [
        "Here is a clear explanation of the main idea.",
        "First, we look at the problem from a simple point of view.",
        "This approach works well in most practical situations.",
        "Remember to check the result carefully before using it.",
        "In short, the answer depends on the details you provide.",
        "Let me know if you would like more examples.",
    ],
    "heads": ["Overview", "Steps", "Example", "Summary"],
    "greet": ["hi", "hello", "hey"],
    "self": "I am {name}, a language model created by {org}.",
    "pii": "You can reach me at {pii} if needed.",
    "please": "please",
}

ES = {
    "ask": [
        "¿Puedes ayudarme con {x}?",
        "Por favor, explícame {x} paso a paso.",
        "Tengo una pregunta sobre {x}.",
        "¿Cuál es la mejor manera de resolver {x}?",
    ],
    "topics": {
        "coding": [
            "una función de Python que elimina los duplicados de una lista",
            "una consulta SQL que une dos tablas",
            "un error en mi código de JavaScript",
        ],
        "math": [
            "la derivada de un polinomio",
            "un problema de probabilidad con dos dados",
            "un sistema de ecuaciones lineales",
        ],
        "creative_writing": [
            "un poema corto sobre el mar",
            "una historia sobre un gato perdido en la ciudad",
        ],
        "instruction_following": [
            "un resumen de este texto en exactamente tres frases",
            "una lista de cinco ideas sin usar la palabra bueno",
        ],
        "hard_multistep": [
            "el presupuesto de un viaje por tres ciudades",
            "la comparación de dos ofertas de trabajo con sueldos distintos",
        ],
        "chit_chat": ["mis planes para el fin de semana", "lo que piensas de los días de lluvia"],
        "captioning": ["una descripción de esta imagen", "un título para esta foto"],
        "ocr": ["el texto que aparece en esta imagen", "los números de este recibo"],
        "entity_recognition": [
            "el edificio que se ve en esta foto",
            "la persona famosa de esta imagen",
        ],
        "humor": ["por qué este meme es gracioso", "el chiste de esta caricatura"],
        "homework": [
            "el ejercicio de esta foto de mi libro",
            "el problema de geometría de esta imagen",
        ],
        "diagram": [
            "el diagrama de flujo de esta imagen",
            "el gráfico de esta captura de pantalla",
        ],
    },
    "extra": [
        "Muchas gracias de antemano.",
        "Lo necesito para el trabajo mañana.",
        "Por favor, que sea sencillo.",
        "Mi profesora me pidió hacer esto.",
    ],
    "follow": ["¿Puedes hacerlo más corto?", "Dame otro ejemplo, por favor.", "¿Por qué es así?"],
    "answer": [
        "Aquí tienes una explicación clara de la idea principal.",
        "Primero, miramos el problema desde un punto de vista sencillo.",
        "Este método funciona bien en la mayoría de las situaciones prácticas.",
        "Recuerda comprobar el resultado con cuidado antes de usarlo.",
        "En resumen, la respuesta depende de los detalles que me des.",
        "Dime si quieres más ejemplos.",
    ],
    "heads": ["Resumen", "Pasos", "Ejemplo", "Conclusión"],
    "greet": ["hola", "buenos días"],
    "self": "Soy {name}, un modelo de lenguaje creado por {org}.",
    "pii": "Puedes escribirme a {pii} si hace falta.",
    "please": "por favor",
}

FR = {
    "ask": [
        "Peux-tu m'aider avec {x} ?",
        "Explique-moi {x} étape par étape, s'il te plaît.",
        "J'ai une question sur {x}.",
        "Quelle est la meilleure façon de traiter {x} ?",
    ],
    "topics": {
        "coding": [
            "une fonction Python qui supprime les doublons d'une liste",
            "une requête SQL qui joint deux tables",
            "un bug dans mon code JavaScript",
        ],
        "math": [
            "la dérivée d'un polynôme",
            "un problème de probabilités avec deux dés",
            "un système d'équations linéaires",
        ],
        "creative_writing": [
            "un petit poème sur la mer",
            "une histoire de chat perdu dans la ville",
        ],
        "instruction_following": [
            "un résumé de ce texte en exactement trois phrases",
            "une liste de cinq idées sans utiliser le mot bien",
        ],
        "hard_multistep": [
            "le budget d'un voyage dans trois villes",
            "la comparaison de deux offres d'emploi avec des salaires différents",
        ],
        "chit_chat": ["mes projets pour le week-end", "ce que tu penses des jours de pluie"],
        "captioning": ["une description de cette image", "une légende pour cette photo"],
        "ocr": ["le texte écrit sur cette image", "les chiffres de ce ticket de caisse"],
        "entity_recognition": [
            "le bâtiment qu'on voit sur cette photo",
            "la personne célèbre sur cette image",
        ],
        "humor": ["pourquoi ce mème est drôle", "la blague de ce dessin"],
        "homework": [
            "l'exercice sur cette photo de mon manuel",
            "le problème de géométrie sur cette image",
        ],
        "diagram": ["l'organigramme de cette image", "le graphique de cette capture d'écran"],
    },
    "extra": [
        "Merci d'avance pour ton aide.",
        "J'en ai besoin pour le travail demain.",
        "Fais simple, s'il te plaît.",
        "Mon professeur m'a demandé de le faire.",
    ],
    "follow": [
        "Tu peux le rendre plus court ?",
        "Donne-moi un autre exemple, s'il te plaît.",
        "Pourquoi est-ce le cas ?",
    ],
    "answer": [
        "Voici une explication claire de l'idée principale.",
        "D'abord, nous regardons le problème d'un point de vue simple.",
        "Cette méthode fonctionne bien dans la plupart des situations pratiques.",
        "N'oublie pas de vérifier le résultat avec soin avant de l'utiliser.",
        "En bref, la réponse dépend des détails que tu me donnes.",
        "Dis-moi si tu veux d'autres exemples.",
    ],
    "heads": ["Aperçu", "Étapes", "Exemple", "Résumé"],
    "greet": ["bonjour", "salut"],
    "self": "Je suis {name}, un modèle de langage créé par {org}.",
    "pii": "Tu peux me contacter à {pii} si besoin.",
    "please": "s'il te plaît",
}

DE = {
    "ask": [
        "Kannst du mir bei {x} helfen?",
        "Bitte erkläre mir {x} Schritt für Schritt.",
        "Ich habe eine Frage zu {x}.",
        "Wie geht man am besten mit {x} um?",
    ],
    "topics": {
        "coding": [
            "einer Python-Funktion, die Duplikate aus einer Liste entfernt",
            "einer SQL-Abfrage, die zwei Tabellen verbindet",
            "einem Fehler in meinem JavaScript-Code",
        ],
        "math": [
            "der Ableitung eines Polynoms",
            "einer Wahrscheinlichkeitsaufgabe mit zwei Würfeln",
            "einem linearen Gleichungssystem",
        ],
        "creative_writing": [
            "einem kurzen Gedicht über das Meer",
            "einer Geschichte über eine verlorene Katze in der Stadt",
        ],
        "instruction_following": [
            "einer Zusammenfassung dieses Textes in genau drei Sätzen",
            "einer Liste mit fünf Ideen ohne das Wort gut",
        ],
        "hard_multistep": [
            "der Planung eines Budgets für eine Reise durch drei Städte",
            "dem Vergleich von zwei Jobangeboten mit unterschiedlichen Gehältern",
        ],
        "chit_chat": ["meinen Plänen für das Wochenende", "dem, was du über Regentage denkst"],
        "captioning": [
            "einer Beschreibung dieses Bildes",
            "einer Bildunterschrift für dieses Foto",
        ],
        "ocr": ["dem Text auf diesem Bild", "den Zahlen auf dieser Quittung"],
        "entity_recognition": [
            "dem Gebäude auf diesem Foto",
            "der berühmten Person auf diesem Bild",
        ],
        "humor": ["der Frage, warum dieses Meme lustig ist", "dem Witz in diesem Cartoon"],
        "homework": [
            "der Aufgabe auf diesem Foto aus meinem Schulbuch",
            "der Geometrieaufgabe auf diesem Bild",
        ],
        "diagram": ["dem Flussdiagramm auf diesem Bild", "dem Diagramm auf diesem Screenshot"],
    },
    "extra": [
        "Vielen Dank im Voraus.",
        "Ich brauche es morgen für die Arbeit.",
        "Bitte halte es einfach.",
        "Meine Lehrerin hat mich darum gebeten.",
    ],
    "follow": [
        "Kannst du es kürzer machen?",
        "Gib mir bitte noch ein Beispiel.",
        "Warum ist das so?",
    ],
    "answer": [
        "Hier ist eine klare Erklärung der wichtigsten Idee.",
        "Zuerst betrachten wir das Problem aus einer einfachen Sicht.",
        "Dieser Ansatz funktioniert in den meisten praktischen Situationen gut.",
        "Denke daran, das Ergebnis sorgfältig zu prüfen, bevor du es verwendest.",
        "Kurz gesagt hängt die Antwort von den Details ab, die du mir gibst.",
        "Sag mir Bescheid, wenn du weitere Beispiele möchtest.",
    ],
    "heads": ["Überblick", "Schritte", "Beispiel", "Zusammenfassung"],
    "greet": ["hallo", "guten Tag"],
    "self": "Ich bin {name}, ein Sprachmodell, das von {org} entwickelt wurde.",
    "pii": "Du erreichst mich unter {pii}, falls nötig.",
    "please": "bitte",
}

PT = {
    "ask": [
        "Você pode me ajudar com {x}?",
        "Por favor, me explique {x} passo a passo.",
        "Tenho uma dúvida sobre {x}.",
        "Qual é a melhor maneira de lidar com {x}?",
    ],
    "topics": {
        "coding": [
            "uma função em Python que remove os itens duplicados de uma lista",
            "uma consulta SQL que junta duas tabelas",
            "um erro no meu código JavaScript",
        ],
        "math": [
            "a derivada de um polinômio",
            "um problema de probabilidade com dois dados",
            "um sistema de equações lineares",
        ],
        "creative_writing": [
            "um poema curto sobre o oceano",
            "uma história sobre um gato perdido na cidade",
        ],
        "instruction_following": [
            "um resumo deste texto em exatamente três frases",
            "uma lista de cinco ideias sem usar a palavra bom",
        ],
        "hard_multistep": [
            "o orçamento de uma viagem por três cidades",
            "a comparação entre duas ofertas de emprego com salários diferentes",
        ],
        "chit_chat": ["meus planos para o fim de semana", "o que você acha dos dias de chuva"],
        "captioning": ["uma descrição desta imagem", "uma legenda para esta foto"],
        "ocr": ["o texto escrito nesta imagem", "os números deste recibo"],
        "entity_recognition": ["o prédio que aparece nesta foto", "a pessoa famosa nesta imagem"],
        "humor": ["por que este meme é engraçado", "a piada desta tirinha"],
        "homework": ["o exercício desta foto do meu livro", "o problema de geometria desta imagem"],
        "diagram": ["o fluxograma desta imagem", "o gráfico desta captura de tela"],
    },
    "extra": [
        "Obrigado desde já.",
        "Preciso disso para o trabalho amanhã.",
        "Por favor, explique de um jeito simples.",
        "Minha professora pediu isso.",
    ],
    "follow": [
        "Você pode deixar mais curto?",
        "Me dê outro exemplo, por favor.",
        "Por que isso acontece?",
    ],
    "answer": [
        "Aqui está uma explicação clara da ideia principal.",
        "Primeiro, olhamos o problema de um ponto de vista simples.",
        "Essa abordagem funciona bem na maioria das situações práticas.",
        "Lembre-se de conferir o resultado com cuidado antes de usá-lo.",
        "Em resumo, a resposta depende dos detalhes que você me der.",
        "Me avise se você quiser mais exemplos.",
    ],
    "heads": ["Visão geral", "Passos", "Exemplo", "Resumo"],
    "greet": ["olá", "oi, tudo bem?"],
    "self": "Eu sou {name}, um modelo de linguagem criado pela {org}.",
    "pii": "Você pode falar comigo em {pii} se precisar.",
    "please": "por favor",
}

IT = {
    "ask": [
        "Puoi aiutarmi con {x}?",
        "Per favore, spiegami {x} passo dopo passo.",
        "Ho una domanda su {x}.",
        "Qual è il modo migliore per affrontare {x}?",
    ],
    "topics": {
        "coding": [
            "una funzione Python che elimina i duplicati da una lista",
            "una query SQL che unisce due tabelle",
            "un errore nel mio codice JavaScript",
        ],
        "math": [
            "la derivata di un polinomio",
            "un problema di probabilità con due dadi",
            "un sistema di equazioni lineari",
        ],
        "creative_writing": [
            "una breve poesia sul mare",
            "una storia su un gatto smarrito in città",
        ],
        "instruction_following": [
            "un riassunto di questo testo in esattamente tre frasi",
            "un elenco di cinque idee senza usare la parola bello",
        ],
        "hard_multistep": [
            "il budget di un viaggio in tre città",
            "il confronto tra due offerte di lavoro con stipendi diversi",
        ],
        "chit_chat": [
            "i miei programmi per il fine settimana",
            "cosa pensi delle giornate di pioggia",
        ],
        "captioning": ["una descrizione di questa immagine", "una didascalia per questa foto"],
        "ocr": ["il testo scritto in questa immagine", "i numeri di questo scontrino"],
        "entity_recognition": [
            "l'edificio che si vede in questa foto",
            "la persona famosa in questa immagine",
        ],
        "humor": ["perché questo meme fa ridere", "la battuta di questa vignetta"],
        "homework": [
            "l'esercizio in questa foto del mio libro",
            "il problema di geometria in questa immagine",
        ],
        "diagram": ["il diagramma di flusso in questa immagine", "il grafico in questo screenshot"],
    },
    "extra": [
        "Grazie mille in anticipo.",
        "Mi serve per il lavoro di domani.",
        "Per favore, tienilo semplice.",
        "Me lo ha chiesto la mia insegnante.",
    ],
    "follow": [
        "Puoi renderlo più breve?",
        "Dammi un altro esempio, per favore.",
        "Perché succede questo?",
    ],
    "answer": [
        "Ecco una spiegazione chiara dell'idea principale.",
        "Per prima cosa guardiamo il problema da un punto di vista semplice.",
        "Questo approccio funziona bene nella maggior parte delle situazioni pratiche.",
        "Ricordati di controllare il risultato con attenzione prima di usarlo.",
        "In breve, la risposta dipende dai dettagli che mi fornisci.",
        "Fammi sapere se vuoi altri esempi.",
    ],
    "heads": ["Panoramica", "Passaggi", "Esempio", "Riepilogo"],
    "greet": ["ciao", "buongiorno"],
    "self": "Sono {name}, un modello linguistico creato da {org}.",
    "pii": "Puoi contattarmi a {pii} se serve.",
    "please": "per favore",
}

WEST = {"en": EN, "es": ES, "fr": FR, "de": DE, "pt": PT, "it": IT}
